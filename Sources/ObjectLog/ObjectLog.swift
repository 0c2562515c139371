// The ObjectLog module. Its contents arrive with its issue.
