// The Thumbnails module. Its contents arrive with its issue.
