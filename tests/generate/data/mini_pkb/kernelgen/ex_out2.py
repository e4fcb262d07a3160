y = 2  # pk
