"""Child-process scripts for the reliability tests."""
