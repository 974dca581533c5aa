"""One module per `grade` command, each a thin layer over one library function."""
