"""`precedents eval`: retrieval and selection quality on labelled sets, through the hook's own
ranking path.
"""
