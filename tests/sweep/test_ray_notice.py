"""Ray's token-authentication notice does not reach the terminal; Ray's other warnings still do.

Why without starting Ray: the notice comes from one function of Ray's at every ``ray.init`` that
leaves the mode to its default; calling that function is the same record on the same logger, in
milliseconds, on a loaded machine too (the end-to-end check is in test_runs.py's Ray sweep).
"""

from __future__ import annotations

import logging

import pytest

from topo.sweep.execute import RAY_TOKEN_LOGGER, RAY_TOKEN_NOTICE, _quiet_token_notice, _WithoutTokenNotice

auth = pytest.importorskip("ray._private.authentication.authentication_token_setup")


@pytest.fixture
def ray_logger():
    """Ray's logger without hbh's filter, given back as it was."""
    logger = logging.getLogger(RAY_TOKEN_LOGGER)
    kept = list(logger.filters)
    for f in kept:
        logger.removeFilter(f)
    try:
        yield logger
    finally:
        for f in list(logger.filters):
            logger.removeFilter(f)
        for f in kept:
            logger.addFilter(f)


def test_ray_says_it_on_the_logger_hbh_filters(ray_logger, caplog) -> None:
    assert auth.logger is ray_logger
    with caplog.at_level(logging.WARNING, logger=RAY_TOKEN_LOGGER):
        auth._warn_token_auth_enabled()
    assert [r.getMessage()[:len(RAY_TOKEN_NOTICE)] for r in caplog.records] == [RAY_TOKEN_NOTICE]


def test_the_notice_is_dropped_and_other_warnings_are_not(ray_logger, caplog) -> None:
    _quiet_token_notice()
    _quiet_token_notice()  # once per process, however many sweeps
    assert sum(isinstance(f, _WithoutTokenNotice) for f in ray_logger.filters) == 1
    with caplog.at_level(logging.WARNING, logger=RAY_TOKEN_LOGGER):
        auth._warn_token_auth_enabled()
        auth._warn_token_auth_disabled()  # another warning of the same logger: it gets through
    assert [r.getMessage().split(".")[0] for r in caplog.records] == [
        "Token authentication is disabled for this Ray cluster"]
