"""``python -m evallens``: the same as the ``evallens`` console script."""

from evallens.app.cli import main

if __name__ == "__main__":
    main()
