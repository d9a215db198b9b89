"""What every part of paysuite stands on; it imports none of them.

- ``target_config``: the target configuration file (and ``yamlfile``, its YAML reader);
- ``specfile``: the OpenAPI document in ``spec/``, from a checkout or an install;
- ``tokens``: the one authorize/refresh flow (with the 401-renew rule) over any transport;
- ``request_data``: customer numbers and amounts a target accepts; one number in any notation;
- ``launcher``: starts and stops the bundled stub as a subprocess (it never imports the stub);
- ``webhook_signature``: how a webhook delivery is signed and verified (the stub signs, every
  receiver verifies).
"""
