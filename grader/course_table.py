"""A TOML table of course.toml being read, and the one error any bad key or value raises (grader.course)."""


class ConfigError(Exception):
    """A one-line complaint that names the file, the key and the value."""


class _Table:
    """A TOML table being read: remembers its dotted key and refuses keys nobody asked for."""

    def __init__(self, file: str, key: str, data: object):
        if not isinstance(data, dict):
            raise ConfigError(f"{file}: {key}: expected a table, got {data!r}")
        self.file, self.key, self.data = file, key, data
        self.used: set[str] = set()

    def where(self, name):
        return f"{self.key}.{name}" if self.key else name

    def bad(self, name, value, expected):
        return ConfigError(f"{self.file}: {self.where(name)}: expected {expected}, got {value!r}")

    def get(self, name, kind, default=None, required=False):
        self.used.add(name)
        if name not in self.data:
            if required:
                raise ConfigError(f"{self.file}: {self.where(name)}: missing")
            return default
        value = self.data[name]
        checks = {
            "str": (lambda v: isinstance(v, str) and v, "a non-empty string"),
            "int": (lambda v: type(v) is int and v > 0, "a positive integer"),
            "number": (lambda v: type(v) in (int, float) and v > 0, "a positive number"),
            "points": (lambda v: type(v) in (int, float) and v >= 0, "a number >= 0"),
            "ids": (lambda v: isinstance(v, list) and all(isinstance(x, str) and x.isidentifier() for x in v),
                    "a list of check ids"),
            "names": (lambda v: isinstance(v, list) and all(isinstance(x, str) and x for x in v), "a list of names"),
        }
        ok, expected = checks[kind]
        if not ok(value):
            raise self.bad(name, value, expected)
        return value

    def table(self, name):
        self.used.add(name)
        return _Table(self.file, self.where(name), self.data.get(name, {}))

    def done(self, extra=()):
        for name in self.data:
            if name not in self.used and name not in extra:
                raise ConfigError(f"{self.file}: {self.where(name)}: unknown key (value {self.data[name]!r})")
