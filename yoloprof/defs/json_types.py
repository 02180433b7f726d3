"""The type of a JSON value: what `--json` prints and the public API returns (readers/results.py
names the readers' results with it; capturing/userloop/public_types.py the profile a decorated call wrote).
Here, in the lowest layer, so that every package can name it."""

# A JSON value: the type of everything inside a result's rows.
JSON = None | bool | int | float | str | list["JSON"] | dict[str, "JSON"]
JSONObject = dict[str, JSON]
Rows = list[JSONObject]
