// The ReactionDiffusion module. Its contents arrive with its issue.
