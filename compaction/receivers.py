"""Receivers of chatcore's announcements (connected in CompactionConfig.ready)."""
