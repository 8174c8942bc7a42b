"""``python -m precedents.cli``: the same command line as the ``precedents`` script."""

from precedents.cli.entry import main

if __name__ == "__main__":
    main()
