"""halformer: Transformer inference on Halide kernels (see the repository's README).

    import halformer
    translator = halformer.Translator("opus-mt-en-de", compute_type="int8")
    translator.translate(["Hello world."])            # -> ["Hallo Welt."]
    translator.translate(["Hello world."], beam=4, nbest=2)  # -> [[(text, score), ...]]
    translator.translate_batch([["▁Hello", "▁world", "."]])  # CTranslate2 style, on pieces
"""
from ._halformer import Error, Tokenizer, TranslationResult, Translator, __version__

__all__ = ["Error", "Tokenizer", "TranslationResult", "Translator", "__version__"]
