"""paysuite proxy: judge live traffic between a real client and a target, rule by rule."""
