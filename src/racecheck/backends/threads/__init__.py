"""The threads backend: real ``threading.Thread``s, one at a time, under a baton."""
