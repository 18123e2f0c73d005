"""Test suite. Sub-folders mirror the packages: tests/teachgrad, tests/viz, tests/course.

This file makes ``tests`` a package, so that a folder like ``tests/teachgrad`` is
imported as ``tests.teachgrad`` and can never shadow the real ``teachgrad`` package.
"""
