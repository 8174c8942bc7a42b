"""Research for precedents: the scripts that train or fit the shipped artifacts, and the
measurements behind shipped settings (research/README.md). Not part of the product."""
