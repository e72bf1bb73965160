"""Report of a set of trials (filled in below)."""


def write_report(out, names):
    pass
