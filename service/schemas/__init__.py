"""The API's request and answer bodies as msgspec Structs, with the bounds they enforce: shared
by the server, the saved plans, the Python client and the CLI. Pure: it imports msgspec and the
sizing core only, so ``service.client`` installs without the server's dependencies."""
