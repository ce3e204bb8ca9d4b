"""What the model tests share: comparing halformer's outputs with the references'."""


def differences(what, got, want):
    """One message per output that differs, and one if the counts differ."""
    out = [f"{what} {i + 1}: halformer {g!r} != transformers {w!r}" for i, (g, w) in enumerate(zip(got, want))
           if g != w]
    if len(got) != len(want):
        out.append(f"{what}: {len(got)} outputs for {len(want)} inputs")
    return out


def expect_error(out, needle, what):
    """A failure unless the finished process `out` failed naming `needle`."""
    if out.returncode == 0 or needle not in out.stderr:
        return [f"{what} was not an error naming {needle!r}: {out.stderr!r}"]
    return []


def finish(failures):
    """Exits non-zero listing `failures`, if any."""
    if failures:
        print("\n".join(failures))
        raise SystemExit(1)
