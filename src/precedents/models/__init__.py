"""The embedding models: which one, how it loads (sentence-transformers, ONNX variants by CPU),
the multilingual model.
"""
