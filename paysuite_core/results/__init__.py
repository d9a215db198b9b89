"""What a judge's run produces, in a package every front-end may import: the rule a check names
(``rule``), how a check ends (``outcome``), a check's result and the run's verdict (``verdict``),
the evidence that reproduces a failure (``evidence``) and the masking of secrets in what is
kept (``masking``). The suite, the proxy, the SDK runs and the webhook listener all produce these
records, so one renderer serves them all and none imports another's internals."""
