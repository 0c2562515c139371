// The RDLab module. Its contents arrive with its issue.
