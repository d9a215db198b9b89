"""The reference stub: an aiohttp implementation of the Payments Transactions Service.

``paysuite stub`` (``cli``) serves it; ``app.build_app(state.StubApp(settings))`` builds it
in-process. ``docs/stub.md`` lists where each rule of the document is enforced.
"""
