"""Fixture: a sibling module the ordinary tools import."""


def greeting(name):
    return "hello " + name
