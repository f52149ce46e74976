"""``python -m evallens``: the same as the ``evallens`` console script."""

from evallens.cli import main

if __name__ == "__main__":
    main()
