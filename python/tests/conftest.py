"""Fixtures shared by the Python tests (the comparator is checks.py)."""
import pytest
import torch


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)
