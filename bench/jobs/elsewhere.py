def never_called():
    return "P7 sets its breakpoint here, in a file the hot loop does not run"
