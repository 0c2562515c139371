import RDLab
