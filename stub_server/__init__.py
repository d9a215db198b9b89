"""The reference stub: an aiohttp implementation of the Payments Transactions Service."""
