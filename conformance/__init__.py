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
  pre-flight, the bundled stub); ``conformance.target.Target``: the target as checks see it,
  over the bounded recording client of ``conformance.http`` and ``conformance.evidence``.
- ``conformance.outcome``: how a check ends (``CheckFailed``, ``CouldNotCheck``,
  ``NotApplicable``); ``conformance.api``: the document's paths and words.
- ``conformance.property_phase``: the schemathesis property run (the PROP checks), over the spec
  fitted by ``conformance.spec_patch`` and ``conformance.document_validity``.
"""
