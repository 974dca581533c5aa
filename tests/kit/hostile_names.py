"""Student names that a spreadsheet runs, a terminal obeys, rich reads as markup, or a file system cannot hold
(tests/kit/unit/ and sandbox/test_regrade.py)."""

# names a spreadsheet runs, a terminal obeys, rich reads as markup, or a file system cannot hold
FORMULAS = ['=HYPERLINK("evil.example","x")', "+cmd|'calc'!A0", "@SUM(1+1)*cmd|'calc'!A0",
            "-2+3+cmd|'calc'!A0", "\t=1+1", "\r=1+1"]
ESCAPES = ["\x1b]0;pwned\x07title", "\x1b[2J\x1b[31mred", "back\x08\x08space", "rtl\u202eexe.py", "nul\x7fdel"]
MARKUP = ["[bold red]loud", "[link=evil.example]click", "[/]"]  # folder names: "[/]" only in CSV
LONG = ["a" * 250, "é" * 120, "x" * 80 + "y" * 100]
