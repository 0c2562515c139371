// The ObjectLogTool module. Its contents arrive with its issue.
