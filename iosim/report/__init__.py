"""What people read: text tables, JSON and CSV (:mod:`.tables`) and plots (:mod:`.plots`)."""
