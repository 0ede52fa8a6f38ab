"""A tiny service the demo agent edits."""

PORT = 8080
HOST = "localhost"


def greet(name):
    return f"Hello, {name}!"


def farewell(name):
    return f"Goodbye, {name}!"


if __name__ == "__main__":
    print(greet("world"))
