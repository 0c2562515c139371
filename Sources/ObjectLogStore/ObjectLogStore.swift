// The ObjectLogStore module. Its contents arrive with its issue.
