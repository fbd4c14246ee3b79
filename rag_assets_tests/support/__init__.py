"""Helpers the tests import (conftest.py holds fixtures only): stores and their settings, the
project's paths, the golden-file switch, and the throwaway PostgreSQL server and Celery workers."""
