# tracedpkg.sub.mod - functions, methods, a static and a class method, a raising and an async
# function, and a slow and a fast one (the threshold): traced by test_apx_site.py through
# apx_site.py's --trace-functions hooks. Imported by the test's script, never by apx.
import time


def add(a, b=1):
    """Adds."""
    return a + b


def boom(msg):
    raise ValueError(msg)


def slow():
    time.sleep(0.003)
    return "slow"


def fast():
    return "fast"


async def coro(x):
    return x * 2


class Calc:
    def __init__(self, k):
        self.k = k

    def mul(self, x):
        return self.k * x

    @staticmethod
    def smeth(x):
        return x - 1

    @classmethod
    def cmeth(cls, x):
        return (cls.__name__, x)

    class Inner:
        def deep(self):
            return "deep"
