"""The target as a judge drives it: the document's paths and the comparisons its rules need
(``api``, ``document_validity``), the OpenAPI document fitted for property runs
(``spec_patch``), the bounded recording client (``http``), the customer's confirm and cancel
(``customer``) and the target with its applications (``target``). The suite's checks and the
proxy's judge share them; neither imports the other."""
