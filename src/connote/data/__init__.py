"""Readers and writers per format, and media loading."""
