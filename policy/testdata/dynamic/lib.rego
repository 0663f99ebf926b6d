package teamlib

blocked := true
