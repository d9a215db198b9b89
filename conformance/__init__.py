"""The conformance suite: checks any implementation of the service against the document.

What it offers, and where:

- ``conformance.runner.run(options) -> int``: one run as a library call (exit status 0 pass,
  1 fail, 2 no verdict); ``conformance.options.Options`` is what it takes
  (``Options.from_args`` for ``paysuite conform``'s arguments). ``conformance.cli`` is the
  ``paysuite conform`` subcommand.
- ``conformance.suite``: the checks, one module per section of the interface document, each
  check beside its catalog entry (``@check`` of ``conformance.checks``).
- ``conformance.catalog``: the list of checks (``CATALOG``, ``get``, ``parse_only``,
  ``render_list``); importable without pytest, httpx or schemathesis.
- ``conformance.plugin``: the pytest plugin (entry point ``paysuite_conformance``) that collects
  and runs the checks, and writes the scorecard and the reports (``conformance.report``).
- ``conformance.preflight``: the target prepared once (configuration, reachability, the
  pre-flight, the bundled stub). The target as checks see it (``Target``), its recording client,
  the document's paths and words live in ``paysuite_core.driver``; how a check ends
  (``CheckFailed``, ``CouldNotCheck``, ``NotApplicable``), its result, the verdict and the
  evidence in ``paysuite_core.results``: the proxy and the SDK runs share them.
- ``conformance.property_phase``: the schemathesis property run (the PROP checks), over the spec
  fitted by ``paysuite_core.driver.spec_patch`` and ``paysuite_core.driver.document_validity``.
"""
