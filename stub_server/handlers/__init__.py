"""The request handlers, one module per section of the interface document (``sandbox`` and
``sdk_extensions`` serve what the document does not: the customer's side and the SDKs' routes).
"""
