"""Words a definition shown to people may never contain: slurs.

The LM was trained on the web, and a definition is shown to other people in the arena. On
our DefGen test file the LM defining the real word "nag" produced a racial slur. Every
definition's decoding blocks these words (`Decoding.block_slurs`), spelled in one token
or in pieces. The list is kept ROT13-encoded so that reading this file does not mean
reading the words; `codecs.decode(word, "rot13")` gives them back.
"""

import codecs

_ENCODED = """
    avttre avttref avttn avttnf fcvp fcvpf jrgonpx jrgonpxf puvax puvaxf tbbx tbbxf xvxr
    xvxrf enturnq enturnqf gbjryurnq gbjryurnqf snttbg snttbgf genaal genaavrf ornare
    ornaref
"""

SLURS = frozenset(codecs.decode(word, "rot13") for word in _ENCODED.split())
