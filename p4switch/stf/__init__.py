"""An interpreter of p4c's STF packet tests that runs them on p4switch (see ``runner``)."""

from .runner import StfResult, match_frame, run_stf_file, run_stf_text

__all__ = ["StfResult", "run_stf_file", "run_stf_text", "match_frame"]
