"""``racecheck bench``: what control costs, and how fast bugs are found."""
