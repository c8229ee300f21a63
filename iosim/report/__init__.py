"""What people read: text tables, JSON and CSV (:mod:`.tables`), plots (:mod:`.plots`), and
the text reports of ``iosim bounds`` (:mod:`.bounds_report`) and ``iosim explore``
(:mod:`.explore_report`).

Its place in the pipeline: above :mod:`iosim.studies`; it formats what :mod:`iosim.run`
and the studies return, and no stage below it imports it.
"""
