;;; ascii_gains_unicode.el --- An agent edit brings non-ASCII text into an ASCII file  -*- lexical-binding: t; -*-

;; Emacs cannot tell the coding of a file of ASCII only: `buffer-file-coding-system' is
;; undecided-unix (or -dos for CRLF).  The package took every non-ASCII character as one the
;; file's coding cannot hold, and left each such edit unsaved (`saved: false'), where the user's
;; own save writes it silently in the default coding (UTF-8), line ends kept.

(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(defun ascii-disk (file)
  "FILE's bytes on disk as UTF-8 text, CRs kept."
  (with-temp-buffer
    (insert-file-contents-literally (expand-file-name file h-root))
    (decode-coding-region (point-min) (point-max) 'utf-8-unix)
    (buffer-string)))

(h-scenario
 (dolist (name '("lf" "crlf"))
   (let* ((file (concat name ".txt"))
          (buf (h-open file)))
     (h-observe (concat name "_coding")
                (symbol-name (buffer-local-value 'buffer-file-coding-system buf)))
     (h-observe (concat name "_edit")
                (agent-edit-replace (list :path file :oldText "two" :newText "two — é 😀")))
     (h-observe (concat name "_modified") (if (buffer-modified-p buf) t :json-false))
     (h-observe (concat name "_disk") (ascii-disk file)))))
