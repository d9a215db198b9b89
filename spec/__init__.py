"""The hand-written OpenAPI document, shipped as package data of ``paysuite.spec``.

``spec/`` stays a top-level folder so that the document reads as the root of the architecture;
``pyproject.toml`` maps it to the ``paysuite.spec`` package so installs carry it too.
"""
