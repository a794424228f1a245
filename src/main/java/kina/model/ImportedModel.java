package kina.model;

import java.util.List;
import java.util.Map;

/**
 * A model read from another tool's files, ready to save as a kina checkpoint: its config, kina's
 * weights (StoryLm.weights names, F32), its tokenizer, what it was ({@code kind}, for the
 * checkpoint's record) and notes on what the import changed (a tied classifier copied, a dummy
 * prefix dropped), one line each.
 */
public record ImportedModel(Config config, Map<String, kina.eval.Tensor> weights, Tokenizer tokenizer, String kind, List<String> notes) {
    public ImportedModel {
        notes = List.copyOf(notes);
    }
}
