"""Paper-style tables and plots from run folders."""
