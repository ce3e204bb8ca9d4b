"""halformer: Transformer inference on Halide kernels (see the repository's README).

    import halformer
    translator = halformer.Translator("opus-mt-en-de", compute_type="int8")
    translator.translate(["Hello world."])            # -> ["Hallo Welt."]
    translator.translate(["Hello world."], beam=4, nbest=2)  # -> [[(text, score), ...]]
    translator.translate(["Hello world."], sampling_topk=10, seed=1)  # random sampling
    nllb.translate(["Hello world."], source_lang="eng_Latn", target_lang="fra_Latn")  # NLLB, M2M100
    translator.translate_batch([["▁Hello", "▁world", "."]])  # CTranslate2 style, on pieces
    for piece in translator.translate_stream("Hello world."):  # text as it is decoded
        print(piece, end="")
"""
import queue
import threading

from ._halformer import Error, Tokenizer, TranslationResult, Translator, __version__

__all__ = ["Error", "Tokenizer", "TranslationResult", "Translator", "__version__"]

_DONE = object()


def _translate_stream(self, text, max_len=None, **options):
    """Yields text increments of one translation (beam 1: greedy or sampling, with
    translate's options) as its tokens are decoded; joined, they are translate's text."""
    tokens = queue.SimpleQueue()

    def run():
        try:
            self._translate_tokens(text, tokens.put, max_len, **options)
        except BaseException as e:  # raised in the caller's thread
            tokens.put(e)
        tokens.put(_DONE)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    ids, shown = [], ""
    while (item := tokens.get()) is not _DONE:
        if isinstance(item, BaseException):
            worker.join()
            raise item
        ids.append(item)
        now = self._decode_text(ids)
        # Only a text that extends what was shown is shown: a piece can change how
        # the ones before it read (a leading space, bytes of one character).
        if now.startswith(shown) and len(now) > len(shown):
            yield now[len(shown):]
            shown = now
    worker.join()
    final = self._decode_text(ids)
    if final.startswith(shown) and len(final) > len(shown):
        yield final[len(shown):]


Translator.translate_stream = _translate_stream
