"""The repository's tooling (`make eval`, `make test-loaded`, the rules-wild figures):
run as scripts, imported by the tests as ``scripts.<name>``. Not part of the package."""
