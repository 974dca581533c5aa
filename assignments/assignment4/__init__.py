"""Assignment 4: training and decoding.

Turn token sequences into padded batches (Vocab, collate), train the Transformer
with label smoothing and the Noam learning-rate schedule (LabelSmoothingLoss,
noam_lr, train_epoch), then translate with greedy decoding (greedy_decode).
"""
