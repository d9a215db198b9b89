"""The hand-written OpenAPI document, shipped as package data of ``paysuite_core.spec``.

``spec/`` stays a top-level folder so that the document reads as the root of the architecture;
``pyproject.toml`` maps it to the ``paysuite_core.spec`` package so installs carry it too.
"""
