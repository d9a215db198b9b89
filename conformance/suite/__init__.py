"""The conformance checks, one module per section of the interface document, in the run's order
as ``conformance.catalog.SECTION_MODULES`` lists them (docs/conformance.md, *Where each check
lives*, says which section each covers)."""
